-- Read KZG entries for retrieval in one call (SPEC §4.5): per key the values of the fields named
-- in ARGV (services/kzg/store/codec.py ENTRY_FIELDS, every field an entry is read from; never
-- the `embedding` bytes) followed by the key's remaining TTL; false for a key that is gone
-- (expired or deleted after the search found it).
local out = {}
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    out[i] = false
  else
    local values = redis.call('HMGET', KEYS[i], unpack(ARGV))
    values[#ARGV + 1] = redis.call('TTL', KEYS[i])
    out[i] = values
  end
end
return out
