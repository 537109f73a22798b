-- wrk script for tools/bench_serve.sh's store switches: GETs /v1/lookup/NUMBER for the numbers
-- of two answer files (the JSON lines 'lookup - --json' printed for the same numbers against
-- set A and set B) and checks every answer: status 200 and a body equal to A's or B's answer
-- for its number. Prints the count of failed and wrong answers at the end.
--   wrk ... -s tools/serve_check.lua http://127.0.0.1:8080 -- answers-a.jsonl answers-b.jsonl
local paths, a, b = {}, {}, {}
local i = 0
local failed, wrong, checked = 0, 0, 0
local threads = {}

local function load(file, into, with_paths)
  for line in io.lines(file) do
    local n = line:match('"number":(%d+)')
    into[n] = line .. "\n"
    if with_paths then paths[#paths + 1] = "/v1/lookup/" .. n end
  end
end

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  load(args[1], a, true)
  load(args[2], b, false)
  i = math.random(#paths)
end

function request()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end

function response(status, headers, body)
  checked = checked + 1
  if status ~= 200 then
    failed = failed + 1
    return
  end
  local n = body:match('"number":(%d+)')
  if n == nil or (a[n] ~= body and b[n] ~= body) then wrong = wrong + 1 end
end

function done(summary, latency, requests)
  local f, w, c = 0, 0, 0
  for _, t in ipairs(threads) do
    f = f + t:get("failed")
    w = w + t:get("wrong")
    c = c + t:get("checked")
  end
  io.write(string.format("checked %d answers: %d failed (status other than 200, or none), %d wrong; socket errors: connect %d, read %d, write %d, timeout %d\n",
    c, f + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, w,
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout))
end
