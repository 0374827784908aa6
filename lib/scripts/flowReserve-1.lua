--[[
  Throttle: reserve one start in the earliest window of `period` ms (aligned on the epoch: window
  i spans [i * period, (i + 1) * period)), from the current one on, that holds fewer than `limit`
  reservations. Windows fill in order, so the key keeps only the last window given and its count:
    - stored window before the current one (or none): the current window, count 1, start now;
    - stored window with room: one more in it, start at max(now, its start);
    - stored window full: the next window, count 1, start at its start.
  The hash is kept until one period after the end of the window it holds, then expires.

  Input:
    KEYS[1]  window   HASH   window (index), count (reservations in it); PX as above

    ARGV[1]  limit (integer >= 1)
    ARGV[2]  period (ms, integer >= 1)

  Output:
    {startAt, now}    when the start may go (ms, Redis time), and Redis's time
    -2                invalid argument
]]
--- @include "now"
local limit = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
if not limit or limit < 1 or limit % 1 ~= 0 or not period or period < 1 or period % 1 ~= 0 then
  return -2
end
local now = nowMs()
local current = math.floor(now / period)
local stored = redis.call("HMGET", KEYS[1], "window", "count")
local window = tonumber(stored[1])
local count = tonumber(stored[2])
local startAt
if not window or not count or window < current then
  window = current
  count = 1
  startAt = now
elseif count < limit then
  count = count + 1
  startAt = math.max(now, window * period)
else
  window = window + 1
  count = 1
  startAt = window * period
end
redis.call("HSET", KEYS[1], "window", string.format("%d", window), "count", count)
redis.call("PEXPIRE", KEYS[1], string.format("%d", (window + 2) * period - now))
return {startAt, now}
