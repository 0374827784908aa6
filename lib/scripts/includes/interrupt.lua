--[[
  Shared fragment (inlined where a script says `--- @include "interrupt"`): the checks of the
  interrupt claim scripts. A run's resume claims are one HASH in the run's slot: `c:<path>` the
  claim (JSON), `exp:<path>` the expiry of an early claim (ms), `n:<path>` invalid payloads counted.

  Defines:
    runStatus(runKey) -> status, refused
        status: the run's stored status, or false when there is no run record; refused: true when
        the run is terminal or rolling back (no claim may be written to it)
    currentClaim(resumeKey, path, now) -> claim JSON, or false
        the claim of interrupt `path` that holds at `now`. An early claim whose expiry has come
        (expiry <= now) counts as absent: it is deleted (`c:<path>` and `exp:<path>`)
    refusalOf(runKey, resumeKey, path, now) -> reply, status
        the reply refusing a claim or a rejection of interrupt `path` ({0} no run, {0, status} a
        finished or rolling-back run, {0, status, claim} a claim holds), or false and the status
]]
local function runStatus(runKey)
  local run = redis.call("HMGET", runKey, "status", "terminal")
  if not run[1] then
    return false, true
  end
  return run[1], run[2] == "1" or run[1] == "rolling_back"
end

local function currentClaim(resumeKey, path, now)
  local held = redis.call("HMGET", resumeKey, "c:" .. path, "exp:" .. path)
  if not held[1] then
    return false
  end
  local expiresAt = tonumber(held[2])
  if expiresAt and expiresAt <= now then
    redis.call("HDEL", resumeKey, "c:" .. path, "exp:" .. path)
    return false
  end
  return held[1]
end

local function refusalOf(runKey, resumeKey, path, now)
  local status, refused = runStatus(runKey)
  if not status then
    return {0}
  end
  if refused then
    return {0, status}
  end
  local existing = currentClaim(resumeKey, path, now)
  if existing then
    return {0, status, existing}
  end
  return false, status
end
