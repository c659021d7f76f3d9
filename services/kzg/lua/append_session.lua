-- Appends turns to a session list in order and refreshes the inactivity TTL of the list, the summary
-- and the taken set (SPEC §3), in one atomic step.
-- KEYS[1] the turns list, KEYS[2] the summary, KEYS[3] the taken set: "turn_id\nrole" of the turns
-- the session took, scored in the order taken, the newest ARGV[2] kept (a turn folded into the
-- summary stays known). ARGV[1] the TTL in seconds, then three values per turn: the encoded turn,
-- its member ('' without a turn_id), and '1' when a resend must not append it twice (resend_safe).
-- A turn made (created_at, the turn's own time; 0: none) more than the TTL after the newest turn of
-- the list opens a new session: live, list and summary would have expired before it came, but Redis
-- counts their TTLs on its own clock, so a replay clears them here (SPEC §3, §11). The taken set stays:
-- a replay resent after a crash must still find the turns of the sessions before (no turn twice).
-- Returns per turn {the list's length after it, 1 when it was left out as a repeat, else 0}.
local function time_of(item)
  local ok, turn = pcall(cjson.decode, item)
  if ok and type(turn) == 'table' and type(turn['created_at']) == 'number' and turn['created_at'] ~= 0 then
    return turn['created_at']
  end
  return nil
end

local ttl = tonumber(ARGV[1])
local newest_at = nil
for _, item in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local at = time_of(item)
  if at and (newest_at == nil or at > newest_at) then
    newest_at = at
  end
end
local results = {}
local newest = redis.call('ZREVRANGE', KEYS[3], 0, 0, 'WITHSCORES')
local order = tonumber(newest[2] or '0')
for i = 3, #ARGV, 3 do
  local item, member, resend_safe = ARGV[i], ARGV[i + 1], ARGV[i + 2] == '1'
  if resend_safe and member ~= '' and redis.call('ZSCORE', KEYS[3], member) then
    results[#results + 1] = {redis.call('LLEN', KEYS[1]), 1}
  else
    local at = time_of(item)
    if at and newest_at and at - newest_at > ttl then
      redis.call('DEL', KEYS[1], KEYS[2])
    end
    if at and (newest_at == nil or at > newest_at) then
      newest_at = at
    end
    results[#results + 1] = {redis.call('RPUSH', KEYS[1], item), 0}
    if member ~= '' then
      order = order + 1
      redis.call('ZADD', KEYS[3], order, member)
    end
  end
end
redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -(tonumber(ARGV[2]) + 1))
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[3], ARGV[1])
return results
