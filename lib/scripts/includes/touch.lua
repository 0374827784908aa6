--[[
  Shared fragment (inlined where a script says `--- @include "touch"`): re-stamp the retention TTL
  of a map's keys. PEXPIRE on a key that does not exist (yet) does nothing.

  Defines:
    touch(keys, ttl)   PEXPIRE every key of the list `keys` to `ttl` ms
]]
local function touch(keys, ttl)
  for _, key in ipairs(keys) do
    redis.call("PEXPIRE", key, ttl)
  end
end
