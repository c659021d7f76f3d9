-- Appends turns to a session list in order and refreshes the inactivity TTL of the list and the
-- summary (SPEC §3), in one atomic step.
-- KEYS[1] the turns list, KEYS[2] the summary. ARGV[1] the TTL in seconds, then three values per
-- turn: the encoded turn; '' to append it in any case, or — resend_safe — its turn_id and role as
-- they stand in an encoded item ('"turn_id": "…"' and '"role": "…"', JSON-escaped by the caller),
-- joined by a newline, when a turn the list holds already must not be appended again.
-- Returns per turn {the list's length after it, 1 when it was left out as a repeat, else 0}.
local results = {}
local items = nil  -- the list's items, read once, when the first resend-safe turn comes
for i = 2, #ARGV, 2 do
  local item, marks = ARGV[i], ARGV[i + 1]
  local repeated = false
  if marks ~= '' then
    local id_mark, role_mark = string.match(marks, '^([^\n]*)\n(.*)$')
    if items == nil then
      items = redis.call('LRANGE', KEYS[1], 0, -1)
    end
    for _, raw in ipairs(items) do
      -- A quote inside a JSON string is escaped, so an unescaped mark is the field itself.
      if string.find(raw, id_mark, 1, true) and string.find(raw, role_mark, 1, true) then
        repeated = true
        break
      end
    end
  end
  if repeated then
    results[#results + 1] = {redis.call('LLEN', KEYS[1]), 1}
  else
    results[#results + 1] = {redis.call('RPUSH', KEYS[1], item), 0}
    if items ~= nil then
      items[#items + 1] = item
    end
  end
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[1])
return results
