--[[
  Bind an idempotency key to a run id, unless it is bound: the first caller's run id wins, and
  every caller gets the bound id back. The binding expires after the idempotency window.

  Input:
    KEYS[1]  the key's binding   STRING run id
    ARGV[1]  run id to bind
    ARGV[2]  window (ms)

  Output: the run id the key is bound to.
]]
local bound = redis.call("GET", KEYS[1])
if bound then
  return bound
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
return ARGV[1]
