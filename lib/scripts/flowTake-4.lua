--[[
  A gathered run asks for its gather. While it is the key's open gather and not due, nothing
  changes and the due time is answered. Once due it is closed (moved to the closed gathers: a later
  start opens another) and its items are answered; a closed gather answers the same items each
  time until its ttl (from its opening) is over.

  Input:
    KEYS[1]  open           HASH   the open gather: runId, openedAt, dueAt, expireAt (ms)
    KEYS[2]  open items     LIST   its items, oldest first
    KEYS[3]  closed         HASH   run id -> its items (cmsgpack), for closed gathers
    KEYS[4]  closed expiry  ZSET   run id -> when its closed gather expires (ms)

    ARGV[1]  run id

  Output:
    {0, now}              no gather of this run is stored (never, or its ttl is over)
    {2, dueAt, now}       open and not due yet
    {1, {item, ...}}      closed (now or before): its items, oldest first
    -2                    invalid argument
]]
--- @include "now"
--- @include "flowGather"
local runId = ARGV[1]
if not runId or runId == "" then
  return -2
end
local now = nowMs()
local meta = redis.call("HMGET", KEYS[1], "runId", "dueAt", "expireAt")
if meta[1] and tonumber(meta[3]) <= now then
  redis.call("DEL", KEYS[1], KEYS[2])
elseif meta[1] == runId then
  local dueAt = tonumber(meta[2])
  if now < dueAt then
    return {2, dueAt, now}
  end
  return {1, closeGather(KEYS[1], KEYS[2], KEYS[3], KEYS[4], runId, meta[3], now)}
end
local expireAt = redis.call("ZSCORE", KEYS[4], runId)
if not expireAt then
  return {0, now}
end
if tonumber(expireAt) <= now then
  redis.call("HDEL", KEYS[3], runId)
  redis.call("ZREM", KEYS[4], runId)
  return {0, now}
end
return {1, cmsgpack.unpack(redis.call("HGET", KEYS[3], runId))}
