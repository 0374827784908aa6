--[[
  Checkpoint one run: the engine's hot-path write, in one round trip.

  In order: check the fencing lease (when a token is given); honour createOnly; refuse to replace
  a terminal record with a non-terminal state (a stale writer) unless reopening; write the record;
  re-stamp its retention TTL; refresh the lease TTL; add the run to its shard's index of
  non-terminal runs, or remove it once terminal. Lua never decodes the JSON: the status and a
  terminal flag are stored beside it.

  Input:
    KEYS[1]  run record        HASH   fields: state (JSON), status, terminal ("1"/"0"), broken
    KEYS[2]  run lease         STRING the holder's token
    KEYS[3]  shard index       ZSET   member = run id, score = updatedAt (ms)

    ARGV[1]  run id
    ARGV[2]  state (JSON)
    ARGV[3]  status
    ARGV[4]  terminal: "1" or "0"
    ARGV[5]  updatedAt (ms), the index score
    ARGV[6]  retention TTL (ms) of the record
    ARGV[7]  lease token; "" for an unfenced write
    ARGV[8]  lease TTL (ms) to refresh the lease to; "0" leaves it alone
    ARGV[9]  createOnly: "1" or "0"
    ARGV[10] reopen: "1" lets a non-terminal state replace a terminal record
    ARGV[11] releaseLease: "1" deletes the lease after writing (the run's final save)
    ARGV[12] acquireLease: "1" takes the lease (SET NX PX with the token) instead of checking it:
             a run's first save in the caller; with createOnly, an existing record is refused first

  Output:
     1  written
     0  not written: createOnly and the record exists
     2  not written: the stored record is terminal and the new state is not
    -1  lease lost (the token does not hold KEYS[2])
    -2  invalid argument
]]
local contextTtl = tonumber(ARGV[6])
local leaseTtl = tonumber(ARGV[8])
local score = tonumber(ARGV[5])
if not contextTtl or contextTtl <= 0 or not leaseTtl or not score then
  return -2
end

local token = ARGV[7]
if ARGV[12] == "1" and token ~= "" then
  if ARGV[9] == "1" and redis.call("EXISTS", KEYS[1]) == 1 then
    return 0
  end
  if not redis.call("SET", KEYS[2], token, "NX", "PX", leaseTtl) then
    return -1
  end
elseif token ~= "" and redis.call("GET", KEYS[2]) ~= token then
  return -1
end

if ARGV[9] == "1" then
  if redis.call("EXISTS", KEYS[1]) == 1 then
    return 0
  end
elseif ARGV[4] == "0" and ARGV[10] ~= "1" then
  if redis.call("HGET", KEYS[1], "terminal") == "1" then
    return 2
  end
end

redis.call("HSET", KEYS[1], "state", ARGV[2], "status", ARGV[3], "terminal", ARGV[4])
redis.call("HDEL", KEYS[1], "broken")
redis.call("PEXPIRE", KEYS[1], contextTtl)

if ARGV[4] == "1" then
  redis.call("ZREM", KEYS[3], ARGV[1])
else
  redis.call("ZADD", KEYS[3], score, ARGV[1])
end

if token ~= "" and ARGV[11] == "1" then
  redis.call("DEL", KEYS[2])
elseif token ~= "" and leaseTtl > 0 then
  redis.call("PEXPIRE", KEYS[2], leaseTtl)
end
return 1
