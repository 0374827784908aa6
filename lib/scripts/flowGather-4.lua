--[[
  Debounce or batch: add an item to a flow key's open gather, opening one for the new run when none
  is open. One gather is open per key, in fixed keys (KEYS[1..2]), so a start needs no run id to
  find it; a closed gather's items are kept under its run id in KEYS[3..4] (see the include
  "flowGather"), readable by flowTake-4.lua while the next gather opens.

    - none open (or the open one's ttl is over): open one for the new run with the item; `last` is
      due min(period, maxWait) from now, `all` maxWait from now (with maxSize 1: due now, closed);
    - `last`: the item replaces the gather's; due min(now + period, openedAt + maxWait);
    - `all`: the item is appended; due openedAt + maxWait, or, when it holds maxSize items (maxSize
      0: no limit), now: it is closed then (the next start opens another gather).
  A gather's keys expire ttl ms after it opened (PEXPIREAT, kept on every write: starts never
  extend it).

  Input:
    KEYS[1]  open           HASH   the open gather: runId, openedAt, dueAt, expireAt (ms)
    KEYS[2]  open items     LIST   its items, oldest first
    KEYS[3]  closed         HASH   run id -> its items (cmsgpack), for closed gathers
    KEYS[4]  closed expiry  ZSET   run id -> when its closed gather expires (ms)

    ARGV[1]  new run id
    ARGV[2]  item
    ARGV[3]  mode: "last" | "all"
    ARGV[4]  period (ms, integer >= 1; `last` only, else 0)
    ARGV[5]  maxWait (ms, integer >= 1)
    ARGV[6]  maxSize (`all`: integer >= 1, or 0 for no limit; `last`: 0)
    ARGV[7]  ttl (ms, integer >= 1)

  Output:
    {runId, opened (1/0), full (1/0), dueAt, size, now}   runId: the gather's (the open one's, or
                                                          the new run's when this start opened it)
    -2      invalid argument
]]
--- @include "now"
--- @include "flowGather"
local newRunId = ARGV[1]
local item = ARGV[2]
local mode = ARGV[3]
local period = tonumber(ARGV[4])
local maxWait = tonumber(ARGV[5])
local maxSize = tonumber(ARGV[6])
local ttl = tonumber(ARGV[7])
local function positive(n)
  return n and n >= 1 and n % 1 == 0
end
if not newRunId or newRunId == "" or not item or (mode ~= "last" and mode ~= "all") or not positive(maxWait)
  or not positive(ttl) or not maxSize or maxSize < 0 or maxSize % 1 ~= 0 or (mode == "last" and not positive(period)) then
  return -2
end
local now = nowMs()
local meta = redis.call("HMGET", KEYS[1], "runId", "openedAt", "expireAt")
local open = meta[1]
if open and tonumber(meta[3]) <= now then
  redis.call("DEL", KEYS[1], KEYS[2])
  open = false
end

if open then
  local openedAt = tonumber(meta[2])
  local expireAt = meta[3]
  local size
  local dueAt
  local full = 0
  if mode == "last" then
    redis.call("DEL", KEYS[2])
    redis.call("RPUSH", KEYS[2], item)
    redis.call("PEXPIREAT", KEYS[2], expireAt)
    size = 1
    dueAt = math.min(now + period, openedAt + maxWait)
  else
    size = redis.call("RPUSH", KEYS[2], item)
    dueAt = openedAt + maxWait
    if maxSize > 0 and size >= maxSize then
      full = 1
      dueAt = now
    end
  end
  if full == 1 then
    closeGather(KEYS[1], KEYS[2], KEYS[3], KEYS[4], open, expireAt, now)
  else
    redis.call("HSET", KEYS[1], "dueAt", string.format("%d", dueAt))
  end
  return {open, 0, full, dueAt, size, now}
end

local expireAt = string.format("%d", now + ttl)
local dueAt
local full = 0
if mode == "last" then
  dueAt = now + math.min(period, maxWait)
else
  dueAt = now + maxWait
  if maxSize == 1 then
    full = 1
    dueAt = now
  end
end
-- A closed gather of the same run id (a reused id) gives way to the new one.
redis.call("HDEL", KEYS[3], newRunId)
redis.call("ZREM", KEYS[4], newRunId)
redis.call("DEL", KEYS[2])
redis.call("RPUSH", KEYS[2], item)
redis.call("HSET", KEYS[1], "runId", newRunId, "openedAt", string.format("%d", now), "dueAt",
  string.format("%d", dueAt), "expireAt", expireAt)
redis.call("PEXPIREAT", KEYS[1], expireAt)
redis.call("PEXPIREAT", KEYS[2], expireAt)
if full == 1 then
  closeGather(KEYS[1], KEYS[2], KEYS[3], KEYS[4], newRunId, expireAt, now)
end
return {newRunId, 1, full, dueAt, 1, now}
