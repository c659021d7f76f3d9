-- New content and vector for an entry that still exists; returns the previous content (or nil).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return false
end
local previous = redis.call('HGET', KEYS[1], 'inhalt')
redis.call('HSET', KEYS[1], 'inhalt', ARGV[1], 'embedding', ARGV[2])
return previous
