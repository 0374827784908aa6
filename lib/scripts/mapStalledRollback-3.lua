--[[
  Find rollback positions of a fan-out map that were reserved but have no outcome (first pass of
  `stalledRollback`; the caller then drops those whose element lease is held).

  Input:
    KEYS[1]  rollback           HASH  total, offset
    KEYS[2]  rollback order     LIST  element indices to undo, in order
    KEYS[3]  rollback outcomes  HASH  index -> RollbackFailure[] (JSON)

    ARGV[1]  cursor: first position to look at
    ARGV[2]  most positions to look at in this call
    ARGV[3]  most candidates to return

  Output:
    {nextCursor, end, i, ...}  candidate element indices, in rollback order; scan again from
                               nextCursor while it is below end (the reserved positions)
    {0, 0}                     no rollback started
    -2                         invalid argument
]]
local cursor = tonumber(ARGV[1])
local maxScan = tonumber(ARGV[2])
local maxFound = tonumber(ARGV[3])
if not cursor or not maxScan or not maxFound then
  return -2
end
local rollbackKey, outcomesKey = KEYS[1], KEYS[3]
if redis.call("EXISTS", rollbackKey) == 0 then
  return {0, 0}
end
local finish = tonumber(redis.call("HGET", rollbackKey, "offset")) or 0
local scanEnd = math.min(finish, cursor + maxScan)
local out = {cursor, finish}
if cursor >= scanEnd then
  return out
end
local indices = redis.call("LRANGE", KEYS[2], cursor, scanEnd - 1)
local found = 0
local position = cursor
for _, index in ipairs(indices) do
  if found >= maxFound then
    break
  end
  if redis.call("HEXISTS", outcomesKey, index) == 0 then
    out[#out + 1] = tonumber(index)
    found = found + 1
  end
  position = position + 1
end
out[1] = position
return out
