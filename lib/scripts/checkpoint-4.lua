--[[
  Checkpoint one run: the engine's hot-path write, in one round trip. It writes a delta: the
  fields the run changed since its last write (its header, the new step's result, attempts and
  trace entries, the undo entries pushed or popped), or the whole record when `full` is set.

  In order: check the fencing lease (when a token is given); honour createOnly; refuse to replace
  a terminal record with a non-terminal state (a stale writer) unless reopening; write the fields
  (a full write deletes the record first); re-stamp its retention TTL; refresh the lease TTL; add
  the run to its shard's index of non-terminal runs, or remove it once terminal. Lua never decodes
  the JSON: the status and a terminal flag are stored beside it.

  Input:
    KEYS[1]  run record        HASH   fields: state (header JSON), inputs, r:<step>, u:<n>, t:<n>,
                                      a:<step>, c:<step>, m:<step> (see run-record.codec.ts), and
                                      status, terminal ("1"/"0"), broken
    KEYS[2]  run lease         STRING the holder's token
    KEYS[3]  shard index       ZSET   member = run id, score = updatedAt (ms)
    KEYS[4]  reactor's runs    ZSET   member = run id, score = creation time (ms): the runs of the
                                      run's reactor in its shard, for `list`; added to by a
                                      createOnly write, trimmed of runs older than the retention

    ARGV[1]  run id
    ARGV[2]  status
    ARGV[3]  updatedAt (ms), the index score
    ARGV[4]  retention TTL (ms) of the record
    ARGV[5]  lease token; "" for an unfenced write
    ARGV[6]  lease TTL (ms) to refresh the lease to; "0" leaves it alone
    ARGV[7]  flags, one character each, "1" or "0", in this order:
               1 terminal: the state is terminal
               2 createOnly: write only if no record exists
               3 reopen: a non-terminal state may replace a terminal record
               4 releaseLease: delete the lease after writing (the run's final save)
               5 acquireLease: take the lease (SET NX PX with the token) instead of checking it: a
                 run's first save in the caller; with createOnly, an existing record is refused first
               6 full: replace the whole record (delete, then write the fields)
    ARGV[8]  stamp: unique to this write of this writer ("" for an unfenced write). Stored in the
             record's `w` field; a re-sent script (its reply was lost and the client sent it again)
             finds its own stamp and answers 1 as the first time did, instead of "exists" or "lease
             lost"
    ARGV[9]  n: the number of field/value arguments that follow (twice the fields to set)
    ARGV[10 .. 9+n]  field, value, field, value, ...   fields to set
    ARGV[10+n ..]    fields to delete

  A `cancel` field (a cancel request, see requestCancel-1.lua) survives every write but a terminal
  one (a full write keeps it; createOnly never finds one); while it is there, a write answers 3.

  Output:
     1  written
     3  written, and the run holds a cancel request
     0  not written: createOnly and the record exists
     2  not written: the stored record is terminal and the new state is not
    -1  lease lost (the token does not hold KEYS[2])
    -2  invalid argument
]]
local contextTtl = tonumber(ARGV[4])
local leaseTtl = tonumber(ARGV[6])
local score = tonumber(ARGV[3])
local flags = ARGV[7]
local stamp = ARGV[8]
local n = tonumber(ARGV[9])
if not contextTtl or contextTtl <= 0 or not leaseTtl or not score or not n or n % 2 ~= 0 or #flags ~= 6 then
  return -2
end
local terminal = string.sub(flags, 1, 1)
local createOnly = string.sub(flags, 2, 2) == "1"
local reopen = string.sub(flags, 3, 3) == "1"
local releaseLease = string.sub(flags, 4, 4) == "1"
local acquireLease = string.sub(flags, 5, 5) == "1"
local full = string.sub(flags, 6, 6) == "1"

local token = ARGV[5]
-- This very write was applied already (a re-send after a lost reply).
local function mine()
  return stamp ~= "" and redis.call("HGET", KEYS[1], "w") == stamp
end
if acquireLease and token ~= "" then
  if createOnly and redis.call("EXISTS", KEYS[1]) == 1 then
    if mine() then
      return 1
    end
    return 0
  end
  if not redis.call("SET", KEYS[2], token, "NX", "PX", leaseTtl) then
    return -1
  end
elseif token ~= "" and redis.call("GET", KEYS[2]) ~= token then
  if mine() then
    return 1
  end
  return -1
end

if createOnly then
  if redis.call("EXISTS", KEYS[1]) == 1 then
    if mine() then
      return 1
    end
    return 0
  end
elseif terminal == "0" and not reopen then
  if redis.call("HGET", KEYS[1], "terminal") == "1" then
    return 2
  end
end

local cancel = false
if terminal == "1" then
  redis.call("HDEL", KEYS[1], "cancel")
else
  cancel = redis.call("HGET", KEYS[1], "cancel")
end
if full then
  redis.call("DEL", KEYS[1])
  if cancel then
    redis.call("HSET", KEYS[1], "cancel", cancel)
  end
end
-- HSET and HDEL in chunks: unpack() is bounded by Lua's C stack.
local CHUNK = 200
local first, last = 10, 9 + n
for i = first, last, 2 * CHUNK do
  redis.call("HSET", KEYS[1], unpack(ARGV, i, math.min(i + 2 * CHUNK - 1, last)))
end
for i = last + 1, #ARGV, CHUNK do
  redis.call("HDEL", KEYS[1], unpack(ARGV, i, math.min(i + CHUNK - 1, #ARGV)))
end
redis.call("HSET", KEYS[1], "status", ARGV[2], "terminal", terminal)
if stamp ~= "" then
  redis.call("HSET", KEYS[1], "w", stamp)
else
  redis.call("HDEL", KEYS[1], "w")
end
redis.call("HDEL", KEYS[1], "broken")
redis.call("PEXPIRE", KEYS[1], contextTtl)

if terminal == "1" then
  redis.call("ZREM", KEYS[3], ARGV[1])
else
  redis.call("ZADD", KEYS[3], score, ARGV[1])
end

if createOnly then
  redis.call("ZADD", KEYS[4], score, ARGV[1])
  redis.call("ZREMRANGEBYSCORE", KEYS[4], "-inf", "(" .. (score - contextTtl))
end

if token ~= "" and releaseLease then
  redis.call("DEL", KEYS[2])
elseif token ~= "" and leaseTtl > 0 then
  redis.call("PEXPIRE", KEYS[2], leaseTtl)
end
if cancel then
  return 3
end
return 1
