-- New content for an entry that still exists; returns the previous content (or nil).
-- ARGV: the field/value pairs of services/kzg/store/codec.py corrected_fields (inhalt, embedding,
-- suchtext, suchsprache), written in one HSET so the index never holds the entry half corrected.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return false
end
local previous = redis.call('HGET', KEYS[1], 'inhalt')
redis.call('HSET', KEYS[1], unpack(ARGV))
return previous
