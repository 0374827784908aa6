--[[
  Shared fragment (inlined where a script says `--- @include "order"`): writes to an ordered lock's
  last completed nonce, which keeps its TTL (set by orderAssign-5.lua).

  Defines:
    setLast(lastKey, nextKey, nonce)
        SET `lastKey` to `nonce`, keeping its TTL; when it has none (it expired before the next
        counter did), it takes the next counter's, so that it never lives on without a TTL
]]
local function setLast(lastKey, nextKey, nonce)
  local ttl = redis.call("PTTL", lastKey)
  if ttl < 1 then
    ttl = math.max(redis.call("PTTL", nextKey), 1)
  end
  redis.call("SET", lastKey, nonce, "PX", ttl)
end
