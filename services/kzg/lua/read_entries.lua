-- Read KZG entries for retrieval in one call (SPEC §4.5): per key a JSON object of every hash
-- field except the raw `embedding` bytes, plus its remaining TTL as `__ttl`; false for a key
-- that is gone (expired or deleted after the KNN found it). One bulk string per hit keeps the
-- client's reply parsing small.
local out = {}
for i = 1, #KEYS do
  local flat = redis.call('HGETALL', KEYS[i])
  if #flat == 0 then
    out[i] = false
  else
    local doc = {}
    for j = 1, #flat, 2 do
      if flat[j] ~= 'embedding' then
        doc[flat[j]] = flat[j + 1]
      end
    end
    doc['__ttl'] = redis.call('TTL', KEYS[i])
    out[i] = cjson.encode(doc)
  end
end
return out
