--[[
  Read the records of elements `from ..< to` of a fan-out map, with `settledFrom` (elements from
  there on were never dispatched: the caller reports them as skipped).

  Input:
    KEYS[1]  counters  HASH  field settledFrom
    KEYS[2]  records   HASH  index -> ElementRecord (JSON)

    ARGV[1]  from (inclusive)
    ARGV[2]  to (exclusive)

  Output:
    {settledFrom, record_from, ..., record_to-1}   settledFrom is -1 when unset; a record is nil
                                                   where none is stored
    -2  invalid argument
    -3  the map is not stored
]]
local from = tonumber(ARGV[1])
local to = tonumber(ARGV[2])
if not from or not to then
  return -2
end
local countersKey, recordsKey = KEYS[1], KEYS[2]
if redis.call("EXISTS", countersKey) == 0 then
  return -3
end
local out = {tonumber(redis.call("HGET", countersKey, "settledFrom")) or -1}
local i = from
while i < to do
  local fields = {}
  local last = math.min(to - 1, i + 999)
  for j = i, last do
    fields[#fields + 1] = j
  end
  local values = redis.call("HMGET", recordsKey, unpack(fields))
  for j = 1, #fields do
    out[#out + 1] = values[j]
  end
  i = last + 1
end
return out
