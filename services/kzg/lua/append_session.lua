-- Appends turns to a session list in order and refreshes the inactivity TTL of the list and the
-- summary (SPEC §3), in one atomic step.
-- KEYS[1] the turns list, KEYS[2] the summary. ARGV[1] the TTL in seconds, then four values per
-- turn: the encoded turn, its turn_id, its role, and '1' when a resend must not append it twice
-- (resend_safe): such a turn whose turn_id (non-empty) and role the list holds already is left out.
-- Returns per turn {the list's length after it, 1 when it was left out as a repeat, else 0}.
local results = {}
local present = nil  -- turn_id .. '\0' .. role of the list's items, read once, when a resend-safe turn comes
for i = 2, #ARGV, 4 do
  local item, turn_id, role, resend_safe = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3] == '1'
  local id = turn_id .. '\0' .. role
  if resend_safe and turn_id ~= '' and present == nil then
    present = {}
    for _, raw in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
      local ok, turn = pcall(cjson.decode, raw)
      if ok and type(turn) == 'table' and type(turn['turn_id']) == 'string' and type(turn['role']) == 'string' then
        present[turn['turn_id'] .. '\0' .. turn['role']] = true
      end
    end
  end
  if resend_safe and turn_id ~= '' and present[id] then
    results[#results + 1] = {redis.call('LLEN', KEYS[1]), 1}
  else
    results[#results + 1] = {redis.call('RPUSH', KEYS[1], item), 0}
    if present ~= nil then
      present[id] = true
    end
  end
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[1])
return results
