--[[
  Release a lease, only for the holder of its token.

  Input:
    KEYS[1]  lease  STRING the holder's token

    ARGV[1]  token

  Output:
    1  released
    0  not held by this token (expired, released or taken): nothing changed
]]
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("DEL", KEYS[1])
  return 1
end
return 0
