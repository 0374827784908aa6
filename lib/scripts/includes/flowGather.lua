--[[
  Shared fragment of the flow gather scripts (flowGather-4.lua, flowTake-4.lua): a key's open
  gather lives in fixed keys (a HASH and its items LIST); when it closes, its items are packed
  (cmsgpack) into the key's HASH of closed gathers under its run id, whose expiry is kept in a ZSET
  (a HASH field has no TTL of its own before Redis 7.4). Every key is passed in by the caller.

  Defines:
    sweepClosed(closed, expiry, now)
        drop (at most 100) closed gathers whose expiry is past
    closeGather(open, items, closed, expiry, runId, expireAt, now) -> items
        move the open gather of run `runId` (kept until expireAt, ms) to the closed ones; the open
        gather's keys are deleted (the next start opens another). Both closed keys are kept until
        the latest expiry they hold.
]]
local function sweepClosed(closed, expiry, now)
  local gone = redis.call("ZRANGEBYSCORE", expiry, "-inf", now, "LIMIT", 0, 100)
  if #gone > 0 then
    redis.call("HDEL", closed, unpack(gone))
    redis.call("ZREM", expiry, unpack(gone))
  end
end

local function closeGather(open, items, closed, expiry, runId, expireAt, now)
  local list = redis.call("LRANGE", items, 0, -1)
  sweepClosed(closed, expiry, now)
  redis.call("HSET", closed, runId, cmsgpack.pack(list))
  redis.call("ZADD", expiry, expireAt, runId)
  local latest = redis.call("ZRANGE", expiry, -1, -1, "WITHSCORES")[2]
  redis.call("PEXPIREAT", closed, latest)
  redis.call("PEXPIREAT", expiry, latest)
  redis.call("DEL", open, items)
  return list
end
