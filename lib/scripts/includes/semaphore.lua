--[[
  Shared fragment (inlined where a script says `--- @include "semaphore"`): a leased semaphore is a
  ZSET holder -> lease expiry (ms). A lease whose expiry has come (expiry <= now) is over.

  Defines:
    prune(key, now)         remove the holders whose lease is over
    keepForLeases(key, now) PEXPIRE the set to its longest lease (nothing when it is empty, which
                            Redis has deleted)
]]
local function prune(key, now)
  redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
end

local function keepForLeases(key, now)
  local last = redis.call("ZRANGE", key, -1, -1, "WITHSCORES")
  if last[2] then
    redis.call("PEXPIRE", key, math.max(tonumber(last[2]) - now, 1))
  end
end
