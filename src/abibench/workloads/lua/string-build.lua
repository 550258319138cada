-- string-build: build, split, hash and join many strings.
-- Written for abibench. String interning, table.concat, string.format and gsub: the
-- interpreter's string table and allocator, where pointer-sized headers matter.
-- Usage: lua string-build.lua ROUNDS
local rounds = tonumber(arg and arg[1]) or 40

local function fnv1a(s, h)
  for i = 1, #s do
    h = ((h ~ s:byte(i)) * 16777619) & 0xffffffff
  end
  return h
end

local words = {}
local seed = 42
for i = 1, 2000 do
  seed = (seed * 1103515245 + 12345) & 0x7fffffff
  local len = 3 + seed % 9
  local chars = {}
  for j = 1, len do
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    chars[j] = string.char(97 + seed % 26)
  end
  words[i] = table.concat(chars)
end

local h = 2166136261
local total = 0
for r = 1, rounds do
  local parts = {}
  for i = 1, #words do
    parts[#parts + 1] = string.format("%s:%d", words[(i * r) % #words + 1], i + r)
  end
  local line = table.concat(parts, ",")
  local upper = line:upper():gsub("[AEIOU]", "_")
  local fields = 0
  for field in upper:gmatch("[^,]+") do
    fields = fields + 1
    if fields % 97 == 0 then
      h = fnv1a(field, h)
    end
  end
  local counts = {}
  for w in line:gmatch("%a+") do
    counts[w] = (counts[w] or 0) + 1
  end
  local keys = {}
  for k in pairs(counts) do
    keys[#keys + 1] = k
  end
  table.sort(keys)
  h = fnv1a(table.concat(keys, " ", 1, math.min(#keys, 50)), h)
  total = total + #line + fields
end
print(string.format("checksum: %d %d", total, h))
