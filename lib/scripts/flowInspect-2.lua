--[[
  What a flow key holds now, read in one step: its live runs with when each was admitted, how many
  runs wait in its queue, and the first `peek` of them (next first).

  Input:
    KEYS[1]  live     ZSET   run id -> when it was admitted (ms, Redis time)
    KEYS[2]  queue    ZSET   run id -> its sequence number

    ARGV[1]  peek (integer >= 0)

  Output:
    {{id, since, id, since, ...}, queued, {id, ...}}
    -2      invalid argument
]]
local peek = tonumber(ARGV[1])
if not peek or peek < 0 or peek % 1 ~= 0 then
  return -2
end
local live = redis.call("ZRANGE", KEYS[1], 0, -1, "WITHSCORES")
local queued = redis.call("ZCARD", KEYS[2])
local nextIds = {}
if peek > 0 and queued > 0 then
  nextIds = redis.call("ZRANGE", KEYS[2], 0, peek - 1)
end
return {live, queued, nextIds}
