module pagecheck

go 1.26
