module github.com/connectbyjbrh/ratecheck

go 1.26
