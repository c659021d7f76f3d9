-- KZG write path, atomic on the server (SPEC §4.3, §4.4, §4.6). No formula is computed here:
-- the salience and TTL of every neighbour come from services/kzg/domain.py as arguments.
--
-- KEYS[1]  the new entry's key
-- KEYS[2]  the promotion stream
-- KEYS[3]  the pair's hash_dirty marker
-- KEYS[4…] neighbour keys to reinforce
-- ARGV[1]  'create' (write KEYS[1], then reinforce) or 'reinforce' (neighbours only)
-- ARGV[2]  TTL of the new entry (seconds)
-- ARGV[3]  '1' when the new entry enters the promotion queue
-- ARGV[4]  hash_dirty reason ('' = leave the marker alone)
-- ARGV[5]  now as unix seconds, the turn's own time (hash_dirty timestamp; reinforced entries'
--          ablauf_am = max(ablauf_am, now + TTL of the new tier), SPEC §11)
-- ARGV[6]  N, the number of field/value pairs of the new entry, followed by them
-- then one JSON array with one array of five strings per neighbour (in KEYS order): expected
-- haeufigkeit ('' = field absent), new haeufigkeit, new salienz, TTL of its new tier, '1' when
-- the new salienz is at or above KZG_SALIENZ_HIGH. (One argument instead of five per neighbour:
-- the client packs a few hundred arguments per write otherwise.)
--
-- Returns {status, code per neighbour…}: status 1 = created, 0 = reinforce only, -1 = the key
-- already existed (nothing written). Codes: 1 reinforced, 2 reinforced and queued,
-- 0 gone (expired or deleted meanwhile), -1 haeufigkeit changed meanwhile (recompute and retry).

-- A job names the entry, the turn that queued it and that turn's own time (ausgeloest_am, ARGV[5]):
-- the promotion happens as of then, so a replay promotes in its own time (SPEC §11).
local function enqueue(key)
  local f = redis.call('HMGET', key, 'turn_id', 'user_id', 'character_id')
  redis.call('XADD', KEYS[2], '*', 'kzg_key', key, 'ausloeser_turn_id', f[1] or '',
    'user_id', f[2] or '', 'character_id', f[3] or '', 'ausgeloest_am', ARGV[5])
end

local nfields = tonumber(ARGV[6])
local status = 0
if ARGV[1] == 'create' then
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return {-1}
  end
  local pairs_ = {}
  for i = 7, 6 + 2 * nfields do
    pairs_[#pairs_ + 1] = ARGV[i]
  end
  redis.call('HSET', KEYS[1], unpack(pairs_))
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  if ARGV[3] == '1' then
    enqueue(KEYS[1])
  end
  if ARGV[4] ~= '' then
    redis.call('HSET', KEYS[3], 'reason', ARGV[4], 'gesetzt_am', ARGV[5], 'kzg_key', KEYS[1])
  end
  status = 1
end

local results = {status}
local updates = cjson.decode(ARGV[7 + 2 * nfields])
for k = 4, #KEYS do
  local key = KEYS[k]
  local u = updates[k - 3]
  local code = 0
  if redis.call('EXISTS', key) == 1 then
    local current = redis.call('HGET', key, 'haeufigkeit') or ''
    if current ~= u[1] then
      code = -1
    else
      -- One HSET per neighbour: each HSET of an indexed hash re-indexes the whole entry (and leaves
      -- the old index entries to the search module's garbage collector until it runs).
      local changed = {'haeufigkeit', u[2], 'salienz', u[3]}
      -- max(remaining, TTL of the new tier), on Redis's clock and in the turn's own time (ablauf_am)
      redis.call('EXPIRE', key, u[4], 'GT')
      local due = tonumber(ARGV[5]) + tonumber(u[4])
      local ablauf = tonumber(redis.call('HGET', key, 'ablauf_am') or '')
      if ablauf == nil or due > ablauf then
        changed[#changed + 1] = 'ablauf_am'
        changed[#changed + 1] = string.format('%.3f', due)
      end
      code = 1
      if u[5] == '1' and redis.call('HGET', key, 'promotion_queued') ~= '1' then
        changed[#changed + 1] = 'promotion_queued'
        changed[#changed + 1] = '1'
        code = 2
      end
      redis.call('HSET', key, unpack(changed))
      if code == 2 then
        enqueue(key)
      end
    end
  end
  results[#results + 1] = code
end
return results
