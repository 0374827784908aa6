--[[
  Push a lock's expiry to a TTL from now, if the owner still holds it under this fence (the fence
  counter's TTL is refreshed too, so that it keeps outliving the lock).

  Input:
    KEYS[1]  lock           HASH   owner, count, fence (see lockAcquire-2.lua)
    KEYS[2]  fence counter  STRING the last fence given

    ARGV[1]  owner
    ARGV[2]  fence
    ARGV[3]  new TTL (ms) of the lock, from now
    ARGV[4]  TTL (ms) of the fence counter (>= ARGV[3])

  Output:
     1  extended
     0  not held by this owner under this fence (expired, released, or another take): nothing changed
    -2  invalid argument
]]
local ttl = tonumber(ARGV[3])
local counterTtl = tonumber(ARGV[4])
if not ttl or ttl <= 0 or not counterTtl or counterTtl < ttl then
  return -2
end
local held = redis.call("HMGET", KEYS[1], "owner", "fence")
if held[1] ~= ARGV[1] or tonumber(held[2]) ~= tonumber(ARGV[2]) then
  return 0
end
redis.call("PEXPIRE", KEYS[1], ttl)
redis.call("PEXPIRE", KEYS[2], counterTtl)
return 1
