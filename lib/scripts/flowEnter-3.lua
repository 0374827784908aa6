--[[
  A run enters a flow key's concurrency: it takes one of `limit` slots when one is free and nobody
  waits (a queued run is never overtaken), else joins the key's queue (first in, first out),
  unless the queue holds `maxQueued` runs (nothing is stored then). Idempotent: a run holding a
  slot answers admitted again, a queued one its current position (its place unchanged).

  Every operation is O(log n) in the queue's length: the queue is a ZSET scored by a sequence
  number (INCR), so membership is ZSCORE/ZRANK and a position is ZRANK + 1 (never a list scan).

  Input:
    KEYS[1]  live     ZSET   run id -> when it was admitted (ms, Redis time)
    KEYS[2]  queue    ZSET   run id -> its sequence number (the head has the smallest)
    KEYS[3]  seq      STRING the last sequence number given (deleted when the queue empties)

    ARGV[1]  run id
    ARGV[2]  limit (integer >= 1)
    ARGV[3]  maxQueued (integer >= 1)

  Output:
    {1, now}              admitted (now, or earlier)
    {2, now, position}    queued; position 1 is next
    {3, now, queued}      the queue is full: nothing stored
    -2                    invalid argument
]]
--- @include "now"
local runId = ARGV[1]
local limit = tonumber(ARGV[2])
local maxQueued = tonumber(ARGV[3])
if not runId or runId == "" or not limit or limit < 1 or limit % 1 ~= 0 or not maxQueued or maxQueued < 1
  or maxQueued % 1 ~= 0 then
  return -2
end
local now = nowMs()
if redis.call("ZSCORE", KEYS[1], runId) then
  return {1, now}
end
local rank = redis.call("ZRANK", KEYS[2], runId)
if rank then
  return {2, now, rank + 1}
end
local queued = redis.call("ZCARD", KEYS[2])
if queued == 0 and redis.call("ZCARD", KEYS[1]) < limit then
  redis.call("ZADD", KEYS[1], now, runId)
  return {1, now}
end
if queued >= maxQueued then
  return {3, now, queued}
end
local seq = redis.call("INCR", KEYS[3])
redis.call("ZADD", KEYS[2], seq, runId)
return {2, now, queued + 1}
