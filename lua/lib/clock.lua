-- Time is the server's: the epoch ms of this call, read once (Valkey gives a script call one
-- time, so a second TIME would answer the same; parts of a composed script share the read).
local clock_memo = nil
local function now_ms()
  if not clock_memo then
    local t = redis.call('TIME')
    clock_memo = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return clock_memo
end
