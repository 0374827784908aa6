--[[
  Count one take of a lock down, if the owner holds it under this fence; the lock is deleted (free)
  at zero. The fence counter is left alone.

  Input:
    KEYS[1]  lock  HASH   owner, count, fence (see lockAcquire-2.lua)

    ARGV[1]  owner
    ARGV[2]  fence

  Output:
    1  counted down (the lock is free when that was its last take)
    0  not held by this owner under this fence: nothing changed
]]
local held = redis.call("HMGET", KEYS[1], "owner", "fence")
if held[1] ~= ARGV[1] or tonumber(held[2]) ~= tonumber(ARGV[2]) then
  return 0
end
if redis.call("HINCRBY", KEYS[1], "count", -1) <= 0 then
  redis.call("DEL", KEYS[1])
end
return 1
