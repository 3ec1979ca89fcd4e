-- wrk's script for benchmarks/_wrk.py: the requests rotate through the paths of a file (one a
-- line, its first argument), all made once in init; a second argument is a bearer token sent
-- with each. The done hook prints what wrk saw as one JSON line: the requests, the seconds
-- they took, latency percentiles and maximum in microseconds, and the errors of each kind
-- (status: answers of 400 or more, which wrk also counts as "Non-2xx or 3xx responses").
--
--   wrk -t1 -c16 -d10s -s benchmarks/_wrk_paths.lua http://127.0.0.1:8000 -- paths.txt [token]

local prepared = {}
local last = 0

function init(args)
  if args[2] then
    wrk.headers["Authorization"] = "Bearer " .. args[2]
  end
  for path in io.lines(args[1]) do
    prepared[#prepared + 1] = wrk.format("GET", path)
  end
  assert(#prepared > 0, "no paths in " .. args[1])
end

function request()
  last = last % #prepared + 1
  return prepared[last]
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    '{"requests": %d, "seconds": %.6f, "p50": %.1f, "p95": %.1f, "p99": %.1f, "max": %.1f, '
      .. '"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}\n',
    summary.requests, summary.duration / 1e6,
    latency:percentile(50.0), latency:percentile(95.0), latency:percentile(99.0), latency.max,
    errors.connect, errors.read, errors.write, errors.status, errors.timeout))
end
