--[[
  Extend a lease, only for the holder of its token.

  Input:
    KEYS[1]  lease  STRING the holder's token

    ARGV[1]  token
    ARGV[2]  new TTL (ms) from now

  Output:
     1  extended
     0  not held by this token (expired, released or taken): nothing changed
    -2  invalid argument
]]
local ttl = tonumber(ARGV[2])
if not ttl or ttl <= 0 then
  return -2
end
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("PEXPIRE", KEYS[1], ttl)
  return 1
end
return 0
