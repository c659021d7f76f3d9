-- Removes a source turn's items from a session list (the list is at most a few dozen items) and the
-- turn from the session's taken set (KEYS[2], members "turn_id\nrole").
local items = redis.call('LRANGE', KEYS[1], 0, -1)
local removed = 0
for _, item in ipairs(items) do
  local ok, turn = pcall(cjson.decode, item)
  if ok and type(turn) == 'table' and turn['turn_id'] == ARGV[1] then
    removed = removed + redis.call('LREM', KEYS[1], 0, item)
  end
end
redis.call('ZREM', KEYS[2], ARGV[1] .. '\nuser', ARGV[1] .. '\nassistant')
return removed
