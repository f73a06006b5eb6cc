-- wrk script for scripts/check-search-service: users typing words, letter by letter, with a
-- look at their search box (/state) every tenth request. Each wrk thread has its own state.
local words = { "search", "season", "server", "session", "stream", "string", "switch", "thread", "timer", "typeahead" }
local counter = 0

request = function()
    counter = counter + 1
    local user = "u" .. (counter * 7919 % 1000)
    if counter % 10 == 0 then
        return wrk.format("GET", "/state?user=" .. user)
    end
    local word = words[(counter % #words) + 1]
    local length = (counter % #word) + 1
    return wrk.format("GET", "/search?user=" .. user .. "&q=" .. string.sub(word, 1, length))
end
