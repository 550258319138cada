-- fannkuch-redux: flip prefixes of every permutation of 1..N, count the most flips.
-- Written for abibench. Integer work on small arrays: Lua integers are 64-bit on every ABI,
-- so 32-bit ABIs pay for 64-bit arithmetic in the interpreter's integer paths.
-- Usage: lua fannkuch.lua N
local n = tonumber(arg and arg[1]) or 10

local perm, perm1, count = {}, {}, {}
for i = 0, n - 1 do
  perm1[i] = i
end

local maxflips, checksum, permcount = 0, 0, 0
local r = n
while true do
  while r ~= 1 do
    count[r - 1] = r
    r = r - 1
  end
  for i = 0, n - 1 do
    perm[i] = perm1[i]
  end
  local flips = 0
  local k = perm[0]
  while k ~= 0 do
    local i, j = 0, k
    while i < j do
      perm[i], perm[j] = perm[j], perm[i]
      i = i + 1
      j = j - 1
    end
    flips = flips + 1
    k = perm[0]
  end
  if flips > maxflips then
    maxflips = flips
  end
  if permcount % 2 == 0 then
    checksum = checksum + flips
  else
    checksum = checksum - flips
  end
  permcount = permcount + 1
  -- next permutation in the counting order
  while true do
    if r == n then
      print(string.format("max flips: %d", maxflips))
      print(string.format("checksum: %d %d", checksum, maxflips))
      return
    end
    local first = perm1[0]
    for i = 0, r - 1 do
      perm1[i] = perm1[i + 1]
    end
    perm1[r] = first
    count[r] = count[r] - 1
    if count[r] > 0 then
      break
    end
    r = r + 1
  end
end
