--[[
  Count one use of a rate limit in every window, or in none. Windows are fixed and aligned on the
  epoch: window i of length w holds the uses from index * w to (index + 1) * w - 1 (ms, Redis
  time), with index = floor(now / w). Every window is checked before any is counted, so a full
  window burns nothing in the others. A counter is kept for twice its window.

  Every key it touches is declared in KEYS (cluster proxies and managed Redis route by them). The
  caller cannot know the index without Redis's time, so it passes, for each window, the counters of
  a run of candidate indexes around its estimate of that time; this script reads TIME and picks
  the candidate of the current index. When none is (the caller's clock estimate was off), nothing
  is touched and the time is returned, for the caller to try again with a better estimate. Every
  candidate shares the rate limit's hash tag, so they all live in one slot.

  Input:
    KEYS     for window 1, its candidates in index order, then window 2's, ...:
             <base>:<w>:<index>   STRING uses counted in that window; PX = 2 * w

    ARGV[1]  n, the number of windows
    ARGV[4i-2], ARGV[4i-1], ARGV[4i], ARGV[4i+1]   window i (i = 1..n): its length w (ms, an
             integer > 0), its limit (> 0), the index of its first candidate key, and how many
             candidates it has (> 0)

  Output:
    {1}                      counted in every window
    {0, i, retryAfter}       nothing counted: window i (0-based, in the order given) is full until
                             it ends, in retryAfter ms (>= 1)
    {-1, now}                nothing counted or read: no candidate key of some window is the
                             current one; `now` is Redis's time (ms)
    -2                       invalid argument
]]
--- @include "now"
local n = tonumber(ARGV[1])
if not n or n < 1 or n ~= math.floor(n) or #ARGV ~= 1 + 4 * n then
  return -2
end
local now = nowMs()
local chosen = {}
local offset = 0
for i = 1, n do
  local windowMs = tonumber(ARGV[4 * i - 2])
  local limit = tonumber(ARGV[4 * i - 1])
  local first = tonumber(ARGV[4 * i])
  local count = tonumber(ARGV[4 * i + 1])
  if not windowMs or windowMs < 1 or windowMs ~= math.floor(windowMs) or not limit or limit < 1
    or not first or first ~= math.floor(first) or not count or count < 1 or count ~= math.floor(count) then
    return -2
  end
  local index = math.floor(now / windowMs)
  local position = index - first
  if position < 0 or position >= count then
    chosen = nil
  elseif chosen then
    chosen[i] = {offset + position + 1, windowMs, limit, index}
  end
  offset = offset + count
end
if offset ~= #KEYS then
  return -2
end
if not chosen then
  return {-1, now}
end
for i = 1, n do
  local c = chosen[i]
  if tonumber(redis.call("GET", KEYS[c[1]]) or "0") >= c[3] then
    return {0, i - 1, (c[4] + 1) * c[2] - now}
  end
end
for i = 1, n do
  local c = chosen[i]
  if redis.call("INCR", KEYS[c[1]]) == 1 then
    redis.call("PEXPIRE", KEYS[c[1]], 2 * c[2])
  end
end
return {1}
