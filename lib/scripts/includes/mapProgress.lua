--[[
  Shared fragment (inlined where a script says `--- @include "mapProgress"`): the progress of a
  fan-out map, judged by the number of stored records, never by a counter alone.

  Defines:
    mapProgress(countersKey, recordsKey)
      -> {total, dispatched, settled, succeeded, failed, halted, skipped, failedIndex, done}
         failedIndex is -1 when no element of an atomic map failed; done is 1 or 0.
         Elements at or past `settledFrom` (an atomic map failed before dispatching them) count
         as skipped without a record of their own.
]]
local function mapProgress(countersKey, recordsKey)
  local c = redis.call("HMGET", countersKey, "total", "offset", "settledFrom", "failedIndex",
    "succeeded", "failed", "halted", "skipped")
  local total = tonumber(c[1]) or 0
  local offset = tonumber(c[2]) or 0
  local settledFrom = tonumber(c[3])
  local finish = settledFrom or total
  local settled = redis.call("HLEN", recordsKey)
  local done = 0
  if settled >= finish then
    done = 1
  end
  return {
    total,
    settledFrom or offset,
    settled,
    tonumber(c[5]) or 0,
    tonumber(c[6]) or 0,
    tonumber(c[7]) or 0,
    (tonumber(c[8]) or 0) + (total - finish),
    tonumber(c[4]) or -1,
    done,
  }
end
