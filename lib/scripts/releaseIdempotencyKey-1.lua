--[[
  Unbind an idempotency key from a run that never started (its inputs were invalid, its
  coordination refused it, or its create failed), so the key stays free for the next call. Only the
  binding to that run id is removed: a key bound to another run is left as it is.

  Input:
    KEYS[1]  the key's binding   STRING run id (see claimIdempotencyKey-1.lua)
    ARGV[1]  run id the key must be bound to

  Output: 1 when the binding was removed, 0 when the key was bound to another run or to none.
]]
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("DEL", KEYS[1])
  return 1
end
return 0
