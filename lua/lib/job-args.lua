-- @requires fail int
-- A new job's arguments, checked the same way by enqueue.lua, flow-add.lua and tick.lua. `noun`
-- and `i` name the job in a refusal (`job 3`, `node 2`); the text is built only on a refusal.
-- The payload: 1..limit bytes.
local function need_payload(payload, limit, noun, i)
  if #payload == 0 then fail('BAD_ARG', noun .. ' ' .. i .. ' has an empty payload') end
  if #payload > limit then
    fail('PAYLOAD_TOO_LARGE', noun .. ' ' .. i .. ' payload is ' .. #payload .. ' bytes, the limit is ' .. limit)
  end
end
-- A backoff: `f:<ms>` fixed or `e:<ms>` exponential, ms 0..86400000.
local function good_backoff(s)
  return int(string.match(s, '^[fe]:(%d+)$'), 0, 86400000) ~= nil
end
-- Its own options, each "" for the consumer's default: max attempts 1..1000, a backoff.
local function need_job_opts(maxA, backoff, noun, i)
  if maxA ~= '' and not int(maxA, 1, 1000) then fail('BAD_ARG', noun .. ' ' .. i .. ' has bad max attempts (1..1000)') end
  if backoff ~= '' and not good_backoff(backoff) then
    fail('BAD_ARG', noun .. ' ' .. i .. ' has a bad backoff (f:<ms> or e:<ms>, ms 0..86400000)')
  end
end
