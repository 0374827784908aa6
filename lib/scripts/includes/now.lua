--[[
  Shared fragment (inlined where a script says `--- @include "now"`): the server's time. The
  coordination scripts read time from Redis, never from the caller, so processes with skewed
  clocks agree on windows and expiries. Redis 7 replicates a script's effects, not the script, so
  TIME is allowed before writes.

  Defines:
    nowMs() -> ms   Redis TIME in whole milliseconds since the epoch:
                    seconds * 1000 + floor(microseconds / 1000)
]]
local function nowMs()
  local time = redis.call("TIME")
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
