-- Queues a promotion job for an entry that still exists (the fields the write path's job has).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return false
end
local f = redis.call('HMGET', KEYS[1], 'turn_id', 'user_id', 'character_id')
local trigger = ARGV[1]
if trigger == '' then
  trigger = f[1] or ''
end
redis.call('HSET', KEYS[1], 'promotion_queued', '1')
return redis.call('XADD', KEYS[2], '*', 'kzg_key', KEYS[1], 'ausloeser_turn_id', trigger,
  'user_id', f[2] or '', 'character_id', f[3] or '')
