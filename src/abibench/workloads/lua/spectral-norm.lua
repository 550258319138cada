-- spectral-norm: the largest singular value of an infinite matrix, by power iteration.
-- Written for abibench. Tight loops over arrays of doubles with integer index arithmetic.
-- Usage: lua spectral-norm.lua N
local size = tonumber(arg and arg[1]) or 500

local function a(i, j)
  local ij = i + j - 1
  return 1.0 / (ij * (ij - 1) * 0.5 + i)
end

local function times(out, vec, n)
  for i = 1, n do
    local sum = 0
    for j = 1, n do
      sum = sum + a(i, j) * vec[j]
    end
    out[i] = sum
  end
end

local function times_transposed(out, vec, n)
  for i = 1, n do
    local sum = 0
    for j = 1, n do
      sum = sum + a(j, i) * vec[j]
    end
    out[i] = sum
  end
end

local function ata_times(out, vec, tmp, n)
  times(tmp, vec, n)
  times_transposed(out, tmp, n)
end

local u, v, tmp = {}, {}, {}
for i = 1, size do
  u[i] = 1
end
for _ = 1, 10 do
  ata_times(v, u, tmp, size)
  ata_times(u, v, tmp, size)
end
local vbv, vv = 0, 0
for i = 1, size do
  local ui, vi = u[i], v[i]
  vbv = vbv + ui * vi
  vv = vv + vi * vi
end
print(string.format("checksum: %.9f", math.sqrt(vbv / vv)))
