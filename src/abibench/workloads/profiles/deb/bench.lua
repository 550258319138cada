-- deb-lua5.4: tables, strings, closures and floating point; prints one checksum line.
local function fannkuch(n)
  local p, q, s, sign, maxflips, sum = {}, {}, {}, 1, 0, 0
  for i = 1, n do p[i] = i; q[i] = i; s[i] = i end
  repeat
    local q1 = p[1]
    if q1 ~= 1 then
      for i = 2, n do q[i] = p[i] end
      local flips = 1
      while true do
        local qq = q[q1]
        if qq == 1 then
          sum = sum + sign * flips
          if flips > maxflips then maxflips = flips end
          break
        end
        q[q1] = q1
        if q1 >= 4 then
          local i, j = 2, q1 - 1
          repeat q[i], q[j] = q[j], q[i]; i = i + 1; j = j - 1 until i >= j
        end
        q1 = qq; flips = flips + 1
      end
    end
    if sign == 1 then
      p[2], p[1] = p[1], p[2]; sign = -1
    else
      p[2], p[3] = p[3], p[2]; sign = 1
      for i = 3, n do
        local sx = s[i]
        if sx ~= 1 then s[i] = sx - 1; break end
        if i == n then return sum, maxflips end
        s[i] = i
        local t = p[1]; for j = 1, i do p[j] = p[j + 1] end; p[i + 1] = t
      end
    end
  until false
end

local function tables(n)
  local t, acc = {}, 0
  for i = 1, n do t[i] = {id = i, name = "k" .. i, v = i * 3 % 1000} end
  table.sort(t, function(a, b) if a.v == b.v then return a.id < b.id end return a.v < b.v end)
  local h = {}
  for i = 1, n do h[t[i].name] = i end
  for i = 1, n, 7 do acc = acc + h["k" .. i] end
  return acc
end

local function strings(n)
  local parts = {}
  for i = 1, n do parts[#parts + 1] = string.format("%d:%x;", i, i * 2654435761 % 4294967296) end
  local s = table.concat(parts)
  local count = 0
  for _ in s:gmatch("%d+:a") do count = count + 1 end
  return #s + count
end

local function mandel(size)
  local sum = 0
  for y = 0, size - 1 do
    local ci = 2.0 * y / size - 1.0
    for x = 0, size - 1 do
      local cr, zr, zi, i = 2.0 * x / size - 1.5, 0.0, 0.0, 0
      while i < 50 and zr * zr + zi * zi < 4.0 do
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        i = i + 1
      end
      sum = sum + i
    end
  end
  return sum
end

local scale = tonumber(arg and arg[1]) or 1
local a, b = fannkuch(9 + (scale > 1 and 1 or 0))
local c = tables(200000 * scale)
local d = strings(200000 * scale)
local e = mandel(400 * scale)
print(string.format("checksum: %d %d %d %d %d", a, b, c, d, e))
