--[[
  Checkpoint runs: the engine's hot-path write. One call carries the deltas of one or more runs
  (group commit: the checkpoints of concurrent runs that are ready in the same event-loop turn go
  together; on a cluster, only runs of one shard, so every key is in one slot). Each run is fenced,
  checked and written on its own, exactly as if it were sent alone: one run's refusal or error
  never touches another's write.

  A run's delta is the fields it changed since its last write (its header, the new step's result,
  attempts and trace entries, the undo entries pushed or popped), or the whole record when `full`
  is set. For each run, in order: check the fencing lease (when a token is given); honour
  createOnly; refuse to replace a terminal record with a non-terminal state (a stale writer) unless
  reopening; write the fields (a full write deletes the record first); re-stamp its TTL (the run's
  own, computed by the caller: its status's retention once finished, `contextTtlMs` while live,
  past its next deadline when it has one);
  refresh the lease TTL; add the run to its shard's index of non-terminal runs, or remove it once
  terminal. Lua never decodes the JSON: the status and a terminal flag are stored beside it.

  Input:
    ARGV[1]  how long (ms) the reactors' runs indexes keep a run after its creation: the longest
             retention (`contextTtlMs` and every status's). Each record's own TTL is in its block
    ARGV[2]  the number of runs that follow

  Then, for each run, its keys (in KEYS, in order) and a block of its arguments: packed, one ARGV
  holding the block's arguments joined by "\0" (JSON never holds a raw NUL, so the values need no
  escaping; a run whose names or sealed values hold one is sent unpacked), or unpacked, one ARGV
  each. A packed block is told from an unpacked one by its first ARGV, longer than the key count.
  The block's arguments, in order:
    KEYS     run record        HASH   fields: state (identity JSON), head (progress JSON), at
                                      (updatedAt, ms), inputs, r:<step>, u:<n>, t:<n>, a:<step>,
                                      c:<step>, m:<step> (see run-record.codec.ts), and status,
                                      terminal ("1"/"0"), broken, w (the last fenced write's stamp)
             run lease         STRING the holder's token
             shard index       ZSET   member = run id, score = index score (ms)
             reactor's runs    ZSET   (only in a createOnly write whose key count is 4 or more)
                                      member = run id, score = creation time (ms): the runs of the
                                      run's reactor in its shard, for `list`; trimmed of runs
                                      created longer than ARGV[1] ago
             tag indexes       ZSET   (the keys after those, 0 to 16: the run's tags this write
                                      sets, issue 25) one per (reactor, tag key, value) in the
                                      run's shard, member = run id, score = creation time (ms);
                                      trimmed like the reactor's runs. A write with tag keys
                                      sends +4 as "<index score>:<creation time>"
    block    +1  key count: 3; 4 with the reactor's runs key (a create); plus one per tag index
             +2  the run id's length: the run id is that many characters at the end of the record
                 key (`<shard>:run:<runId>`), so it is not sent again
             +3  status
             +4  index score (ms); for a create whose index score is not its creation time (a run
                 that flow control holds back sits in the index at when it is due, or at the end
                 of time), "<index score>:<creation time>"
             +5  lease token; "" for an unfenced write
             +6  lease TTL (ms) to refresh the lease to; "0" leaves it alone
             +7  flags, one character each, "1" or "0", in this order:
                   1 terminal: the state is terminal
                   2 createOnly: write only if no record exists
                   3 reopen: a non-terminal state may replace a terminal record
                   4 releaseLease: delete the lease after writing (the run's final save)
                   5 acquireLease: take the lease (SET NX PX with the token) instead of checking
                     it: a run's first save in the caller; with createOnly, an existing record is
                     refused first
                   6 full: replace the whole record (delete, then write the fields)
                   7 announce (optional; 6 flags mean "0"): once written, PUBLISH "settled" on
                     the run's wake-up channel, `<record key>:events` (the engine sets it on a
                     write of a settled run, terminal or paused: its waiters and watchers in other
                     processes wake without a command of their own)
             +8  write number: with the token, the stamp `<token>:<n>` unique to this write of this
                 writer (unused for an unfenced write). Stored in the record's `w` field; a re-sent
                 script (its reply was lost and the client sent it again) finds its own stamp and
                 answers 1 as the first time did, instead of "exists" or "lease lost"
             +9  record TTL (ms): how long the record is kept after this write (PEXPIRE), a
                 positive integer (passed to PEXPIRE as given)
             +10 s: the number of field/value arguments that follow (twice the fields to set)
             +11 d: the number of fields to delete, after them
             +12 ..  field, value, field, value, ... (s arguments), then the d fields to delete

  A `cancel` field (a cancel request, see requestCancel-1.lua) survives every write but a terminal
  one (a full write keeps it; createOnly never finds one); while it is there, a write answers 3.

  Output: an array, one entry per run, in order:
     1  written
     3  written, and the run holds a cancel request
     0  not written: createOnly and the record exists
     2  not written: the stored record is terminal and the new state is not
    -1  lease lost (the token does not hold the lease key)
    -2  invalid argument
    an error reply: a command of this run's write failed (e.g. WRONGTYPE); nothing after it in
    that run's write was done, and the other runs are unaffected
]]
local window = tonumber(ARGV[1])
local runs = tonumber(ARGV[2])
if not window or window <= 0 or not runs or #KEYS < 3 * runs then
  return -2
end

-- HSET and HDEL in chunks: unpack() is bounded by Lua's C stack.
local CHUNK = 200

-- One run's checkpoint: its block's arguments are a[o + 1 ..] (ARGV, or a packed block split).
local function checkpoint(record, leaseKey, index, runsKey, tagKeys, a, o)
  -- The run id is the end of the record key (`...:run:<runId>`); its length is sent, not the id.
  local idLength = tonumber(a[o + 2])
  if not idLength or idLength < 1 or idLength > #record then
    return -2
  end
  local runId = string.sub(record, -idLength)
  local status = a[o + 3]
  local scores = a[o + 4]
  local colon = string.find(scores, ":", 1, true)
  local score = tonumber(colon and string.sub(scores, 1, colon - 1) or scores)
  -- The reactor's runs are listed by creation time, which is the index score unless given apart.
  local created = colon and tonumber(string.sub(scores, colon + 1)) or score
  local token = a[o + 5]
  local leaseTtl = tonumber(a[o + 6])
  local flags = a[o + 7]
  local stamp = token ~= "" and (token .. ":" .. a[o + 8]) or ""
  local recordTtl = a[o + 9]
  local ttl = tonumber(recordTtl)
  local s = tonumber(a[o + 10])
  local d = tonumber(a[o + 11])
  if not leaseTtl or not score or not created or not ttl or ttl <= 0 or not s or not d or s % 2 ~= 0 or (#flags ~= 6 and #flags ~= 7) then
    return -2
  end
  local terminal = string.sub(flags, 1, 1)
  local createOnly = string.sub(flags, 2, 2) == "1"
  local reopen = string.sub(flags, 3, 3) == "1"
  local releaseLease = string.sub(flags, 4, 4) == "1"
  local acquireLease = string.sub(flags, 5, 5) == "1"
  local full = string.sub(flags, 6, 6) == "1"
  local announce = string.sub(flags, 7, 7) == "1"

  -- This very write was applied already (a re-send after a lost reply).
  local function mine()
    return stamp ~= "" and redis.call("HGET", record, "w") == stamp
  end
  if acquireLease and token ~= "" then
    if createOnly and redis.call("EXISTS", record) == 1 then
      if mine() then
        return 1
      end
      return 0
    end
    if not redis.call("SET", leaseKey, token, "NX", "PX", leaseTtl) then
      return -1
    end
  elseif token ~= "" and redis.call("GET", leaseKey) ~= token then
    if mine() then
      return 1
    end
    return -1
  end

  -- What the write must know of the stored record, in one read: whether it is terminal, its
  -- cancel request and whether it is marked broken.
  local storedTerminal, cancel, broken = false, false, false
  if createOnly then
    if redis.call("EXISTS", record) == 1 then
      if mine() then
        return 1
      end
      return 0
    end
  else
    local read = redis.call("HMGET", record, "terminal", "cancel", "broken")
    storedTerminal, cancel, broken = read[1] == "1", read[2], read[3]
    if terminal == "0" and not reopen and storedTerminal then
      return 2
    end
  end

  if terminal == "1" then
    if cancel then
      redis.call("HDEL", record, "cancel")
    end
    cancel = false
  end
  if full then
    redis.call("DEL", record)
    if cancel then
      redis.call("HSET", record, "cancel", cancel)
    end
    broken = false
  end
  -- The status, the terminal flag and the write's stamp go with the first chunk of fields: one HSET
  -- for a checkpoint of up to CHUNK fields.
  local first, last = o + 12, o + 11 + s
  local lastOfFirst = math.min(first + 2 * CHUNK - 1, last)
  if stamp ~= "" then
    redis.call("HSET", record, "status", status, "terminal", terminal, "w", stamp, unpack(a, first, lastOfFirst))
  else
    redis.call("HSET", record, "status", status, "terminal", terminal, unpack(a, first, lastOfFirst))
    redis.call("HDEL", record, "w")
  end
  for i = lastOfFirst + 1, last, 2 * CHUNK do
    redis.call("HSET", record, unpack(a, i, math.min(i + 2 * CHUNK - 1, last)))
  end
  for i = last + 1, last + d, CHUNK do
    redis.call("HDEL", record, unpack(a, i, math.min(i + CHUNK - 1, last + d)))
  end
  if broken then
    redis.call("HDEL", record, "broken")
  end
  -- The string as sent: a Lua number that large would be formatted with an exponent.
  redis.call("PEXPIRE", record, recordTtl)

  if terminal == "1" then
    redis.call("ZREM", index, runId)
  else
    redis.call("ZADD", index, score, runId)
  end

  if createOnly and runsKey then
    redis.call("ZADD", runsKey, created, runId)
    redis.call("ZREMRANGEBYSCORE", runsKey, "-inf", "(" .. string.format("%d", created - window))
  end
  if tagKeys then
    for i = 1, #tagKeys do
      redis.call("ZADD", tagKeys[i], created, runId)
      redis.call("ZREMRANGEBYSCORE", tagKeys[i], "-inf", "(" .. string.format("%d", created - window))
    end
  end

  if token ~= "" and releaseLease then
    redis.call("DEL", leaseKey)
  elseif token ~= "" and leaseTtl > 0 then
    redis.call("PEXPIRE", leaseKey, leaseTtl)
  end
  if announce then
    redis.call("PUBLISH", record .. ":events", "settled")
  end
  if cancel then
    return 3
  end
  return 1
end

-- A packed block's arguments, split at each NUL.
local function split(packed)
  local parts, n, from = {}, 0, 1
  while true do
    local at = string.find(packed, "\0", from, true)
    n = n + 1
    if not at then
      parts[n] = string.sub(packed, from)
      return parts
    end
    parts[n] = string.sub(packed, from, at - 1)
    from = at + 1
  end
end

local out = {}
local k, o = 0, 2
for r = 1, runs do
  local first = ARGV[o + 1]
  local a, b, width
  if first and #first > 1 then
    a, b, width = split(first), 0, 1
  else
    a, b = ARGV, o
  end
  local keyCount = tonumber(a and a[b + 1])
  local s = tonumber(a and a[b + 10])
  local d = tonumber(a and a[b + 11])
  if not keyCount or keyCount < 3 or keyCount > 20 or not s or not d then
    -- The blocks cannot be told apart past a malformed one.
    for rest = r, runs do
      out[rest] = -2
    end
    return out
  end
  -- A create's 4th key is the reactor's runs index; the keys after the fixed ones are tag indexes.
  local create = string.sub(a[b + 7] or "", 2, 2) == "1"
  local runsKey = create and keyCount >= 4 and KEYS[k + 4] or nil
  local firstTag = runsKey and 5 or 4
  local tagKeys = nil
  if keyCount >= firstTag then
    tagKeys = {}
    for i = firstTag, keyCount do
      tagKeys[#tagKeys + 1] = KEYS[k + i]
    end
  end
  local ok, result = pcall(checkpoint, KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], runsKey, tagKeys, a, b)
  if ok then
    out[r] = result
  else
    out[r] = { err = type(result) == "table" and result.err or tostring(result) }
  end
  k = k + keyCount
  o = o + (width or (11 + s + d))
end
return out
