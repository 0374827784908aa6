--[[
  The claims of some interrupts of a run that hold at `now`. An early claim whose expiry has come
  counts as absent and is deleted (see interruptClaim-3.lua).

  `take` (the run has reached these interrupts) makes the early claims it returns permanent:
  their expiry is deleted. `peek` leaves them as they are and, when it finds any, moves the run to
  `now` in its shard's index of live runs (`ZADD XX`: only while it is there), so that a sweeper
  resumes it if the job that should do so is lost.

  Input:
    KEYS[1]  resume       HASH   c:<path>, exp:<path>, n:<path> (see interruptClaim-3.lua)
    KEYS[2]  shard index  ZSET   member = top-level run id, score = updatedAt (ms)

    ARGV[1]     top-level run id
    ARGV[2]     mode: "take" or "peek"
    ARGV[3]     now (ms)
    ARGV[4 ..]  interrupt paths

  Output:
    {path, claim, path, claim, ...}   the claims found (JSON), in the order of the paths asked
    -2                                invalid argument
]]
--- @include "interrupt"
local mode = ARGV[2]
local now = tonumber(ARGV[3])
if not now or (mode ~= "take" and mode ~= "peek") then
  return -2
end
local found = {}
for i = 4, #ARGV do
  local path = ARGV[i]
  local claim = currentClaim(KEYS[1], path, now)
  if claim then
    found[#found + 1] = path
    found[#found + 1] = claim
    if mode == "take" then
      redis.call("HDEL", KEYS[1], "exp:" .. path)
    end
  end
end
if mode == "peek" and #found > 0 then
  redis.call("ZADD", KEYS[2], "XX", ARGV[3], ARGV[1])
end
return found
