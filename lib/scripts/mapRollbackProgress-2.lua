--[[
  Rollback bookkeeping of a fan-out map: how many elements to undo, how many reported, and the
  outcomes that carry failures (clean outcomes, "[]", are counted but not returned).

  Input:
    KEYS[1]  rollback           HASH  total, offset, signalled
    KEYS[2]  rollback outcomes  HASH  index -> RollbackFailure[] (JSON)

  Output:
    {}                                   no rollback started
    {total, reported, i, failures, ...}  failures is the JSON array reported by element i
]]
local rollbackKey, outcomesKey = KEYS[1], KEYS[2]
if redis.call("EXISTS", rollbackKey) == 0 then
  return {}
end
local outcomes = redis.call("HGETALL", outcomesKey)
local out = {tonumber(redis.call("HGET", rollbackKey, "total")) or 0, #outcomes / 2}
for i = 1, #outcomes, 2 do
  if outcomes[i + 1] ~= "[]" then
    out[#out + 1] = tonumber(outcomes[i])
    out[#out + 1] = outcomes[i + 1]
  end
end
return out
