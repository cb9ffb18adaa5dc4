-- Q3 2026 revenue by region, in euros
SELECT region, SUM(revenue) / 100.0 AS revenue_eur
FROM sales
WHERE sold_on >= DATE '2026-07-01' AND sold_on < DATE '2026-10-01'
GROUP BY region;
