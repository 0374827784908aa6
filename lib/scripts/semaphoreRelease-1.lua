--[[
  Give a holder's semaphore slot back. Leases that are over are swept first, so releasing a slot
  whose lease ended answers 0, like one never held.

  Input:
    KEYS[1]  semaphore  ZSET   member = holder, score = expiry of its lease (ms, Redis time)

    ARGV[1]  holder

  Output:
    1  released
    0  the holder held no slot
]]
--- @include "now"
--- @include "semaphore"
local now = nowMs()
prune(KEYS[1], now)
local removed = redis.call("ZREM", KEYS[1], ARGV[1])
keepForLeases(KEYS[1], now)
return removed
