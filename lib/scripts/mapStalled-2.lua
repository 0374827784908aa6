--[[
  Find dispatched elements of a fan-out map that have no record (first pass of `stalled`; the
  caller then drops those whose element lease is held). Scans from max(cursor, low), where `low`
  is the first index without a record, so a sweep costs O(in flight), not O(total).

  Input:
    KEYS[1]  counters  HASH  offset, settledFrom, low
    KEYS[2]  records   HASH  index -> ElementRecord (JSON)

    ARGV[1]  cursor: first index to look at
    ARGV[2]  most indices to look at in this call
    ARGV[3]  most candidates to return

  Output:
    {nextCursor, end, i, ...}  candidates ascending; scan again from nextCursor while it is below
                               end (the dispatched bound: settledFrom, else offset)
    -2  invalid argument
    -3  the map is not stored
]]
local cursor = tonumber(ARGV[1])
local maxScan = tonumber(ARGV[2])
local maxFound = tonumber(ARGV[3])
if not cursor or not maxScan or not maxFound then
  return -2
end
local countersKey, recordsKey = KEYS[1], KEYS[2]
if redis.call("EXISTS", countersKey) == 0 then
  return -3
end
local c = redis.call("HMGET", countersKey, "offset", "settledFrom", "low")
local finish = tonumber(c[2]) or tonumber(c[1]) or 0
local i = math.max(cursor, tonumber(c[3]) or 0)
local scanEnd = math.min(finish, i + maxScan)
local out = {0, finish}
local found = 0
while i < scanEnd and found < maxFound do
  if redis.call("HEXISTS", recordsKey, i) == 0 then
    out[#out + 1] = i
    found = found + 1
  end
  i = i + 1
end
out[1] = i
return out
