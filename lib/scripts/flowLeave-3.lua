--[[
  A run leaves a flow key: its slot (or its place in the queue) is freed, then the queue's head is
  admitted, in order, while fewer than `limit` runs hold a slot. A run that is neither live nor
  queued (it left already, or never entered) changes nothing and admits nobody.

  Input:
    KEYS[1]  live     ZSET   run id -> when it was admitted (ms, Redis time)
    KEYS[2]  queue    ZSET   run id -> its sequence number
    KEYS[3]  seq      STRING the queue's last sequence number; deleted here when the queue empties

    ARGV[1]  run id
    ARGV[2]  limit (integer >= 1)

  Output:
    {0}                     the run was neither live nor queued: nothing changed
    {1, now, {id, ...}}     it left; the run ids admitted now, in queue order (maybe none)
    -2                      invalid argument
]]
--- @include "now"
local runId = ARGV[1]
local limit = tonumber(ARGV[2])
if not runId or runId == "" or not limit or limit < 1 or limit % 1 ~= 0 then
  return -2
end
if redis.call("ZREM", KEYS[1], runId) == 0 and redis.call("ZREM", KEYS[2], runId) == 0 then
  return {0}
end
local now = nowMs()
local admitted = {}
local free = limit - redis.call("ZCARD", KEYS[1])
if free > 0 then
  local popped = redis.call("ZPOPMIN", KEYS[2], free)
  for i = 1, #popped, 2 do
    redis.call("ZADD", KEYS[1], now, popped[i])
    admitted[#admitted + 1] = popped[i]
  end
end
if redis.call("EXISTS", KEYS[2]) == 0 then
  redis.call("DEL", KEYS[3])
end
return {1, now, admitted}
