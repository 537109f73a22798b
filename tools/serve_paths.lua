-- wrk script for tools/bench_serve.sh: GETs PREFIX..NUMBER for the numbers of a file (one per
-- line), each thread from its own starting point, round robin.
--   wrk ... -s tools/serve_paths.lua http://127.0.0.1:8080 -- numbers.txt [/v1/lookup/]
local paths = {}
local i = 0

function init(args)
  local prefix = args[2] or "/v1/lookup/"
  for line in io.lines(args[1]) do paths[#paths + 1] = prefix .. line end
  i = math.random(#paths)
end

function request()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
