-- binary-trees: allocate and walk many short-lived complete binary trees.
-- Written for abibench. Exercises the allocator and the garbage collector: every node is a
-- table, so pointer size (4 or 8 bytes) shows in the heap and in the time spent collecting.
-- Usage: lua binary-trees.lua DEPTH
local depth = tonumber(arg and arg[1]) or 16

local function make(d)
  if d == 0 then
    return {}
  end
  return { make(d - 1), make(d - 1) }
end

local function count(tree)
  local left = tree[1]
  if left == nil then
    return 1
  end
  return 1 + count(left) + count(tree[2])
end

local mindepth = 4
local maxdepth = math.max(mindepth + 2, depth)
local checksum = 0

local stretch = make(maxdepth + 1)
checksum = checksum + count(stretch)
stretch = nil

local longlived = make(maxdepth)

for d = mindepth, maxdepth, 2 do
  local iterations = 1 << (maxdepth - d + mindepth)
  local nodes = 0
  for _ = 1, iterations do
    nodes = nodes + count(make(d))
  end
  checksum = checksum + nodes
  print(string.format("depth %d: %d trees, %d nodes", d, iterations, nodes))
end

checksum = checksum + count(longlived)
print(string.format("checksum: %d", checksum))
