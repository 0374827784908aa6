--[[
  Claim interrupt `path` of a run: the first claim wins and is never changed (it is the dedup
  marker of the resume). An early claim (made before the run reached its interrupt) carries an
  expiry, after which it counts as absent and the next claim replaces it.

  Refused for a missing run, a terminal one and one rolling back. A claim won while the run is
  paused moves the run to `now` in its shard's index of live runs (`ZADD XX`: only while it is
  there), so that a sweeper resumes it if the job that should do so is lost. The claims hash is
  kept for the retention TTL after each write.

  Input:
    KEYS[1]  run record   HASH   of the top-level run; fields status, terminal ("1"/"0") (see
                                 checkpoint-n.lua)
    KEYS[2]  resume       HASH   c:<path> claim (JSON), exp:<path> expiry of an early claim (ms),
                                 n:<path> invalid payloads counted (see interruptReject-3.lua)
    KEYS[3]  shard index  ZSET   member = top-level run id, score = updatedAt (ms)

    ARGV[1]  top-level run id
    ARGV[2]  interrupt path (never contains ':')
    ARGV[3]  the claim (JSON)
    ARGV[4]  now (ms)
    ARGV[5]  expiry of an early claim (ms); "" for a claim that holds for good
    ARGV[6]  retention TTL (ms) of the resume hash

  Output:
    {1, status}            won: the claim is written; status is the run's
    {0}                    not written: no run
    {0, status}            not written: the run is terminal or rolling back
    {0, status, claim}     not written: an earlier claim holds (its JSON)
    -2                     invalid argument
]]
--- @include "interrupt"
local now = tonumber(ARGV[4])
local expiresAt = ARGV[5]
local retention = tonumber(ARGV[6])
if not now or not retention or retention <= 0 or (expiresAt ~= "" and not tonumber(expiresAt)) then
  return -2
end
local path = ARGV[2]
local refusal, status = refusalOf(KEYS[1], KEYS[2], path, now)
if refusal then
  return refusal
end
redis.call("HSET", KEYS[2], "c:" .. path, ARGV[3])
if expiresAt ~= "" then
  redis.call("HSET", KEYS[2], "exp:" .. path, expiresAt)
else
  redis.call("HDEL", KEYS[2], "exp:" .. path)
end
if status == "paused" then
  redis.call("ZADD", KEYS[3], "XX", ARGV[4], ARGV[1])
end
redis.call("PEXPIRE", KEYS[2], retention)
return {1, status}
