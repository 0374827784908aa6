--[[
  Count an invalid payload for interrupt `path` of a run. When the count reaches `maxAttempts`
  (0: unlimited), claim the interrupt `rejected` in the same step: the run fails with the last
  payload's field errors. Nothing is counted once the interrupt has a claim (an early claim whose
  expiry has come counts as absent, as in interruptClaim-3.lua).

  Refused for a missing run, a terminal one and one rolling back. A `rejected` claim written while
  the run is paused moves the run to `now` in its shard's index of live runs, like a claim. The
  resume hash is kept for the retention TTL after each write.

  Input:
    KEYS[1]  run record   HASH   of the top-level run; fields status, terminal (see checkpoint-n.lua)
    KEYS[2]  resume       HASH   c:<path>, exp:<path>, n:<path> (see interruptClaim-3.lua)
    KEYS[3]  shard index  ZSET   member = top-level run id, score = updatedAt (ms)

    ARGV[1]  top-level run id
    ARGV[2]  interrupt path (never contains ':')
    ARGV[3]  now (ms)
    ARGV[4]  maxAttempts; 0 for unlimited
    ARGV[5]  retention TTL (ms) of the resume hash
    ARGV[6]  the `rejected` claim's JSON up to its attempt count:
             {"kind":"rejected","fieldErrors":<errors>,"attempts":
    ARGV[7]  the rest of it: ,"at":<now>}
             (the claim is ARGV[6] .. <count> .. ARGV[7], so the JSON is the caller's, byte for byte)

  Output:
    {1, status, attempts, final}   counted: attempts so far; final 1 when it reached maxAttempts
                                   (the interrupt is claimed `rejected`), else 0
    {0}                            not counted: no run
    {0, status}                    not counted: the run is terminal or rolling back
    {0, status, claim}             not counted: the interrupt has a claim (its JSON)
    -2                             invalid argument
]]
--- @include "interrupt"
local now = tonumber(ARGV[3])
local maxAttempts = tonumber(ARGV[4])
local retention = tonumber(ARGV[5])
if not now or not maxAttempts or not retention or retention <= 0 then
  return -2
end
local path = ARGV[2]
local refusal, status = refusalOf(KEYS[1], KEYS[2], path, now)
if refusal then
  return refusal
end
local attempts = redis.call("HINCRBY", KEYS[2], "n:" .. path, 1)
local final = 0
if maxAttempts > 0 and attempts >= maxAttempts then
  final = 1
  redis.call("HSET", KEYS[2], "c:" .. path, ARGV[6] .. attempts .. ARGV[7])
  redis.call("HDEL", KEYS[2], "exp:" .. path)
  if status == "paused" then
    redis.call("ZADD", KEYS[3], "XX", ARGV[3], ARGV[1])
  end
end
redis.call("PEXPIRE", KEYS[2], retention)
return {1, status, attempts, final}
