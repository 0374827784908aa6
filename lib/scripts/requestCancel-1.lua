--[[
  Ask a run to cancel: store the reason with a non-terminal run, where the process executing it
  finds it at its next checkpoint (checkpoint-n.lua answers 3 while the field is there). A terminal
  run, and a run that is rolling back (its rollback is under way: nothing is left to cancel), are
  left as they are.

  Input:
    KEYS[1]  run record   HASH (see checkpoint-n.lua); field `cancel` gets the reason
    ARGV[1]  reason

  Output: the run's status (a string), or nil when there is no run.
]]
if redis.call("EXISTS", KEYS[1]) == 0 then
  return false
end
local status = redis.call("HGET", KEYS[1], "status")
if redis.call("HGET", KEYS[1], "terminal") ~= "1" and status ~= "rolling_back" then
  redis.call("HSET", KEYS[1], "cancel", ARGV[1])
end
return status
