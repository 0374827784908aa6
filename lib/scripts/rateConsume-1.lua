--[[
  Count one use of a rate limit in every window, or in none. Windows are fixed and aligned on the
  epoch: window i of length w holds the uses from index * w to (index + 1) * w - 1 (ms, Redis
  time), with index = floor(now / w). Every window is checked before any is counted, so a full
  window burns nothing in the others. A counter is kept for twice its window.

  Each counter is `<KEYS[1]>:<w>:<index>`, built here from the time read here (the caller cannot
  know the index without asking Redis for the time first). They all begin with KEYS[1], whose hash
  tag they share, so they live in KEYS[1]'s slot.

  Input:
    KEYS[1]  the rate limit's base key (a prefix: it holds nothing itself)
             <KEYS[1]>:<w>:<index>   STRING uses counted in that window; PX = 2 * w

    ARGV[2i-1], ARGV[2i]   window i (i = 1..n): its length w (ms, an integer > 0) and its limit (> 0)

  Output:
    {1}                      counted in every window
    {0, i, retryAfter}       nothing counted: window i (0-based, in the order given) is full until
                             it ends, in retryAfter ms (>= 1)
    -2                       invalid argument
]]
--- @include "now"
local n = #ARGV / 2
if n < 1 or n ~= math.floor(n) then
  return -2
end
local now = nowMs()
local counters = {}
for i = 1, n do
  local windowMs = tonumber(ARGV[2 * i - 1])
  local limit = tonumber(ARGV[2 * i])
  if not windowMs or windowMs < 1 or windowMs ~= math.floor(windowMs) or not limit or limit < 1 then
    return -2
  end
  local index = math.floor(now / windowMs)
  local key = KEYS[1] .. ":" .. ARGV[2 * i - 1] .. ":" .. string.format("%d", index)
  if tonumber(redis.call("GET", key) or "0") >= limit then
    return {0, i - 1, (index + 1) * windowMs - now}
  end
  counters[i] = {key, windowMs}
end
for _, counter in ipairs(counters) do
  if redis.call("INCR", counter[1]) == 1 then
    redis.call("PEXPIRE", counter[1], 2 * counter[2])
  end
end
return {1}
