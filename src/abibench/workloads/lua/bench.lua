-- abibench's Lua driver: runs each benchmark script of this directory once, in this process,
-- and prints the CPU seconds each took (os.clock) and one combined checksum line.
-- Written for abibench.
-- Usage: lua bench.lua DIR NAME=ARG [NAME=ARG ...]   e.g. lua bench.lua . n-body=500000
local dir = arg[1]
if not dir or #arg < 2 then
  io.stderr:write("usage: lua bench.lua DIR NAME=ARG [NAME=ARG ...]\n")
  os.exit(2)
end

local requests = { table.unpack(arg, 2) }
local real_print = print
local checksums = {}
local total = 0
for _, request in ipairs(requests) do
  local name, value = request:match("^([%w%-]+)=(.*)$")
  if not name then
    io.stderr:write("bad benchmark argument '" .. request .. "': write NAME=ARG\n")
    os.exit(2)
  end
  local chunk, err = loadfile(dir .. "/" .. name .. ".lua")
  if not chunk then
    io.stderr:write(err .. "\n")
    os.exit(2)
  end
  local found
  -- the scripts print their own checksum line; keep it instead of printing it
  print = function(...)
    local line = table.concat({ ... }, "\t")
    local sum = line:match("^checksum: (.*)$")
    if sum then
      found = sum
    end
  end
  arg = { [0] = name .. ".lua", value }
  collectgarbage("collect")
  local t0 = os.clock()
  chunk(value)
  local seconds = os.clock() - t0
  print = real_print
  if not found then
    io.stderr:write(name .. " printed no checksum line\n")
    os.exit(1)
  end
  total = total + seconds
  checksums[#checksums + 1] = name .. "=" .. (found:gsub(" ", "/"))
  print(string.format("%s_s: %.6f", (name:gsub("%-", "_")), seconds))
end
print(string.format("total_s: %.6f", total))
print("checksum: " .. table.concat(checksums, ","))
