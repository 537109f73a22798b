-- wrk script for tools/bench_serve.sh: GETs /v1/lookup/NUMBER round robin, each thread from its
-- own starting point.
--   wrk ... -s tools/serve_wrk.lua http://127.0.0.1:8080 -- numbers.txt
--     the numbers of a file, one per line
--   wrk ... -s tools/serve_wrk.lua http://127.0.0.1:8080 -- --check answers-a.jsonl answers-b.jsonl
--     the numbers of two answer files (what 'lookup - --json' printed for the same numbers
--     against set A and set B), every answer checked: status 200 and a body equal to A's or B's
--     answer for its number; the counts of failed and wrong answers are printed at the end.
local paths, a, b = {}, {}, {}
local i = 0
failed, wrong, checked, checking = 0, 0, 0, false
local threads = {}

local function load(file, into)
  for line in io.lines(file) do
    local n = line:match('"number":(%d+)')
    into[n] = line .. "\n"
    if into == a then paths[#paths + 1] = "/v1/lookup/" .. n end
  end
end

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  if args[1] == "--check" then
    checking = true
    load(args[2], a)
    load(args[3], b)
    -- Only now: wrk reads the bodies only when the script has a response function.
    function response(status, headers, body)
      checked = checked + 1
      if status ~= 200 then
        failed = failed + 1
        return
      end
      local n = body:match('"number":(%d+)')
      if n == nil or (a[n] ~= body and b[n] ~= body) then wrong = wrong + 1 end
    end
  else
    for line in io.lines(args[1]) do paths[#paths + 1] = "/v1/lookup/" .. line end
  end
  i = math.random(#paths)
end

function request()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end

function done(summary, latency, requests)
  local f, w, c = 0, 0, 0
  for _, t in ipairs(threads) do
    if not t:get("checking") then return end
    f = f + t:get("failed")
    w = w + t:get("wrong")
    c = c + t:get("checked")
  end
  local e = summary.errors
  io.write(string.format("checked %d answers: %d failed (a status other than 200, or none), %d wrong; socket errors: connect %d, read %d, write %d, timeout %d\n",
    c, f + e.connect + e.read + e.write + e.timeout, w, e.connect, e.read, e.write, e.timeout))
end
