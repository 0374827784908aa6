--[[
  Store the inputs of elements `start ..< start + n` of a fan-out map, and re-stamp the TTL of
  the inputs hash. Called before the map is created (the source is streamed in chunks first).

  Input:
    KEYS[1]  inputs  HASH  index -> element inputs (JSON)

    ARGV[1]  start (index of the first element)
    ARGV[2]  retention TTL (ms)
    ARGV[3..] the inputs of elements start, start+1, ... (JSON)

  Output:
     n  number of inputs stored
    -2  invalid argument
]]
local start = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
if not start or start < 0 or not ttl or ttl <= 0 then
  return -2
end
local inputsKey = KEYS[1]
local n = #ARGV - 2
-- HSET in slices: unpack() of thousands of values would overflow Lua's C stack.
local i = 1
while i <= n do
  local args = {}
  local last = math.min(n, i + 499)
  for j = i, last do
    args[#args + 1] = start + j - 1
    args[#args + 1] = ARGV[j + 2]
  end
  redis.call("HSET", inputsKey, unpack(args))
  i = last + 1
end
if n > 0 then
  redis.call("PEXPIRE", inputsKey, ttl)
end
return n
